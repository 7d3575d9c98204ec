// `npm run caniemail:update [VERSION]`: replaces the vendored caniemail data
// (src/validation/data/caniemail.json and its LICENSE) with the one of an npm
// release, by `npm pack` (nothing installed), and says what to write in the
// data's README (version and date).
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const target = join(root, 'src/validation/data');
const version = process.argv[2] ?? 'latest';
const work = mkdtempSync(join(tmpdir(), 'caniemail-'));
try {
  const tarball = execFileSync('npm', ['pack', `caniemail@${version}`, '--silent'], { cwd: work, encoding: 'utf8' }).trim().split('\n').pop();
  execFileSync('tar', ['xzf', tarball], { cwd: work });
  const data = JSON.parse(readFileSync(join(work, 'package/data/caniemail.json'), 'utf8'));
  if (!Array.isArray(data.data) || typeof data.nicenames !== 'object') throw new Error('caniemail.json has no data or nicenames');
  copyFileSync(join(work, 'package/data/caniemail.json'), join(target, 'caniemail.json'));
  copyFileSync(join(work, 'package/LICENSE'), join(target, 'LICENSE'));
  const pkg = JSON.parse(readFileSync(join(work, 'package/package.json'), 'utf8'));
  console.log(`caniemail ${pkg.version} (${pkg.license}): api_version ${data.api_version}, last_update_date ${data.last_update_date}, ${data.data.length} features`);
  console.log('update src/validation/data/README.md with that version and date');
} finally {
  rmSync(work, { recursive: true, force: true });
}
