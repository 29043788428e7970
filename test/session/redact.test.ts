import { describe, expect, it } from "vitest";
import { REDACTED as RUNTIME_REDACTED } from "../../internal/runtime/secrets.js";
import {
  isSecretKey,
  REDACTED,
  redactDeep,
  redactStringMap,
  redactText,
} from "../../internal/session/redact.js";

describe("redact", () => {
  it.each([
    "GITHUB_TOKEN",
    "token",
    "AWS_SECRET_ACCESS_KEY",
    "db_password",
    "PASSWD",
    "gpg_passphrase",
    "OPENAI_API_KEY",
    "x-api-key",
    "apikey",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "Authorization",
    "AUTH",
    "basic_auth",
    "SSH_PRIVATE_KEY",
    "AWS_ACCESS_KEY_ID",
    "cookie",
  ])("isSecretKey: %s is secret", (k) => {
    expect(isSecretKey(k)).toBe(true);
  });

  it.each(["PATH", "HOME", "LOG_LEVEL", "author", "GIT_AUTHOR_NAME", "session_key", "bypass", "role"])(
    "isSecretKey: %s is not secret",
    (k) => {
      expect(isSecretKey(k)).toBe(false);
    },
  );

  it("redactText: KEY=value assignments with secret keys, anywhere in the text", () => {
    expect(redactText("API_TOKEN=abc")).toBe(`API_TOKEN=${REDACTED}`);
    expect(redactText("PATH=/bin")).toBe("PATH=/bin");
    expect(redactText('run: GH_TOKEN="a b c" make; LOG=1')).toBe(`run: GH_TOKEN=${REDACTED} make; LOG=1`);
    expect(redactText("x PASSWORD='p w' y")).toBe(`x PASSWORD=${REDACTED} y`);
    expect(redactText("no assignments here")).toBe("no assignments here");
    // A value runs to the next whitespace: over-redacting beats leaking.
    expect(redactText("(SECRET=x)")).toBe(`(SECRET=${REDACTED}`);
  });

  it("one marker, and redacting twice changes nothing (the fingerprint's display values are redacted again by the store)", () => {
    expect(REDACTED).toBe(RUNTIME_REDACTED);
    for (const text of [
      "TOKEN_COPY=abc; sleep 1",
      'GH_TOKEN="a b" x',
      "API_KEY=[redacted]; y",
      "A=1 PASSWORD=p",
    ]) {
      const once = redactText(text);
      expect(redactText(once)).toBe(once);
    }
    expect(redactText("TOKEN_COPY=[redacted]; sleep 1")).toBe("TOKEN_COPY=[redacted]; sleep 1");
  });

  it("redactStringMap: secret keys' values, and assignments inside other values", () => {
    expect(redactStringMap({ TOKEN: "t", cmd: "env API_KEY=k agent", user: "u" })).toEqual({
      TOKEN: REDACTED,
      cmd: `env API_KEY=${REDACTED} agent`,
      user: "u",
    });
  });

  it("redactDeep: nested objects and arrays, any value type under a secret key", () => {
    const input = {
      a: [{ password: { nested: "x" } }, "SECRET_X=1", 3, null, true],
      b: { token: 42, ok: "fine" },
      dropped: undefined,
    };
    expect(redactDeep(input)).toEqual({
      a: [{ password: REDACTED }, `SECRET_X=${REDACTED}`, 3, null, true],
      b: { token: REDACTED, ok: "fine" },
    });
    expect(input.b.token).toBe(42); // pure: the input is untouched
  });
});
