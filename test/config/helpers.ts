/**
 * Test helpers: parse city YAML text in memory (no files) into what resolution takes.
 */

import { ConfigError, formatConfigIssue } from "../../internal/base/errors.js";
import { type CityConfig, parseCity } from "../../internal/config/parse.js";
import type { CityModel } from "../../internal/config/resolve.js";

export const CITY_DIR = "/srv/city";
export const CITY_FILE = `${CITY_DIR}/city.yaml`;
/** A fixed local time: the beacon reads 2025-01-02T03:04:05 in any time zone. */
export const NOW = new Date(2025, 0, 2, 3, 4, 5);

export interface CityOptions {
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly defaultProvider?: string;
  readonly cityDir?: string;
  readonly promptTemplates?: Readonly<Record<string, string>>;
  readonly providerOverride?: string;
}

/** Parses `text` as a city file; throws ConfigError like loadCity would. */
export function city(text: string, opts: CityOptions = {}): CityModel & { readonly config: CityConfig } {
  const cityDir = opts.cityDir ?? CITY_DIR;
  const parsed = parseCity({
    text,
    file: `${cityDir}/city.yaml`,
    cityDir,
    env: opts.env ?? {},
    defaultProvider: opts.defaultProvider ?? "tmux",
    providerOverride: opts.providerOverride,
  });
  return { cityDir, config: parsed.config, promptTemplates: opts.promptTemplates ?? {} };
}

/** The formatted issues `text` produces (empty when it parses). */
export function issues(text: string, opts: CityOptions = {}): string[] {
  try {
    city(text, opts);
    return [];
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    return e.issues.map((i) => formatConfigIssue(i).replace(`${opts.cityDir ?? CITY_DIR}/city.yaml:`, ""));
  }
}
