/**
 * The names of convx's settings, alone: `--help` lists a profile's keys (`config set`'s summary)
 * and completion offers them, and neither needs config-file.ts, which reads and writes the files
 * (and loads node:crypto, about 7 ms of a `--help` in all).
 */

/** The settings a profile may hold, as `convx config` names them; the token is not one of them. */
export const PROFILE_KEYS = ['mode', 'data', 'api', 'deliveryApi', 'plugin', 'format', 'tz', 'trackingDomains', 'trackingParams'] as const;
/** The settings `convx config get|set|unset` take: a profile's, and which profile is the default. */
export const CONFIG_KEYS = [...PROFILE_KEYS, 'defaultProfile'] as const;
export type ProfileKey = (typeof PROFILE_KEYS)[number];
