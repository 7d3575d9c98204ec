// Copies the data files of src/ that tsc does not emit (the vendored caniemail
// data, src/validation/data/) to the same place under dist/. Part of `npm run build`.
import { cpSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
cpSync(join(root, 'src/validation/data'), join(root, 'dist/validation/data'), { recursive: true });
