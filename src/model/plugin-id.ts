/**
 * A plugin id that names a file of its own on every system (`data import --split-plugins`, the
 * plugin directory `convx serve` serves, `data shards`): 1 to 128 characters of letters, digits,
 * dot, hyphen and underscore, beginning with a letter or a digit (so never empty, `.`, `..` or
 * hidden, and never a path).
 */
export const SAFE_PLUGIN_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
