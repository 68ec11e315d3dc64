// Turning the guest's endpoint description into something the host can start.
//
// The guest passes configuration text as written, `${VAR}` references included. They
// are resolved here, in the host, so secrets kept in the environment never enter the
// sandbox. The child's environment is built here too: a small allowlist of the ambient
// environment plus the server's explicit `env`, so credentials in the host's
// environment never reach a server by accident. A port of
// host/src/transport/endpoint.rs: same allowlist, same syntax, same messages.

/**
 * Ambient variables every child gets (when set): enough to find programs, a home
 * directory and a locale, and nothing credential-shaped.
 */
export const AMBIENT_ALLOWLIST = Object.freeze([
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  'TERM',
  'LANG',
  'LANGUAGE',
  'LC_ALL',
  'LC_CTYPE',
  'TMPDIR',
  'TEMP',
  'TMP',
  'TZ',
  'XDG_RUNTIME_DIR',
  'XDG_CONFIG_HOME',
  'XDG_CACHE_HOME',
  'XDG_DATA_HOME',
  'SYSTEMROOT',
  'APPDATA',
  'LOCALAPPDATA',
  'USERPROFILE',
]);

/** Thrown for an endpoint that cannot be resolved; the message says which field and why. */
export class EndpointError extends Error {}

/**
 * Resolves a stdio endpoint (`{command, args, env: [{name, value}], cwd}` as the guest
 * sends it) against `lookup`, the host's environment in production.
 *
 * @param {{command: string, args: string[], env: {name: string, value: string}[], cwd?: string, sandbox?: {env?: string[]}}} ep
 * @param {(name: string) => string | undefined} lookup
 * @returns {{command: string, args: string[], env: Record<string, string>, cwd?: string}}
 *   `env` is the child's complete environment.
 * @throws {EndpointError}
 */
export function resolveStdio(ep, lookup) {
  const command = interpolate(ep.command, 'command', lookup);
  if (command.trim() === '') {
    throw new EndpointError('`command` is empty');
  }
  const args = ep.args.map((a, i) => interpolate(a, `args[${i}]`, lookup));
  const cwd = ep.cwd == null ? undefined : interpolate(ep.cwd, 'cwd', lookup);

  const env = {};
  // A sandbox's `env` names the only ambient variables that pass.
  for (const name of ep.sandbox?.env ?? AMBIENT_ALLOWLIST) {
    const value = lookup(name);
    if (value !== undefined) {
      env[name] = value;
    }
  }
  for (const pair of ep.env) {
    // Explicit configuration wins over the ambient allowlist.
    env[pair.name] = interpolate(pair.value, `env.${pair.name}`, lookup);
  }
  return { command, args, env, cwd };
}

/**
 * Resolves an HTTP endpoint (`{url, headers: [{name, value}]}`) against `lookup`: `${VAR}`
 * in the URL and the header values. The URL must be http:// or https://.
 *
 * @param {{url: string, headers: {name: string, value: string}[]}} ep
 * @param {(name: string) => string | undefined} lookup
 * @returns {{url: string, headers: [string, string][]}}
 * @throws {EndpointError}
 */
export function resolveHttp(ep, lookup) {
  const url = interpolate(ep.url, 'url', lookup);
  const lower = url.replace(/[A-Z]/g, (c) => c.toLowerCase());
  if (!(lower.startsWith('http://') || lower.startsWith('https://'))) {
    throw new EndpointError(`\`url\` must start with http:// or https:// (got ${debugString(url)})`);
  }
  const headers = ep.headers.map((p) => [p.name, interpolate(p.value, `headers.${p.name}`, lookup)]);
  return { url, headers };
}

/**
 * Expands `${VAR}` and `${VAR:-default}` in `text`. `field` names the place in error
 * messages. `$` not followed by `{` is kept as it is.
 *
 * @param {string} text
 * @param {string} field
 * @param {(name: string) => string | undefined} lookup
 * @returns {string}
 * @throws {EndpointError}
 */
export function interpolate(text, field, lookup) {
  let out = '';
  let rest = text;
  for (let start = rest.indexOf('${'); start !== -1; start = rest.indexOf('${')) {
    out += rest.slice(0, start);
    const after = rest.slice(start + 2);
    const end = after.indexOf('}');
    if (end === -1) {
      throw new EndpointError(`\`${field}\` has an unclosed \`\${\` in ${debugString(text)}`);
    }
    const reference = after.slice(0, end);
    const split = reference.indexOf(':-');
    const name = split === -1 ? reference : reference.slice(0, split);
    const fallback = split === -1 ? undefined : reference.slice(split + 2);
    if (!/^[A-Za-z0-9_]+$/.test(name)) {
      throw new EndpointError(`\`${field}\` has an invalid variable reference \`\${${reference}}\``);
    }
    let value = lookup(name);
    // Like the shell: `:-` also replaces a variable that is set but empty.
    if (fallback !== undefined && (value === undefined || value === '')) {
      value = fallback;
    }
    if (value === undefined) {
      throw new EndpointError(
        `\`${field}\` uses \${${name}}, which is not set; set ${name} in the environment or write \${${name}:-default}`,
      );
    }
    out += value;
    rest = after.slice(end + 1);
  }
  return out + rest;
}

/** `text` quoted the way Rust's `{:?}` quotes a string, so messages match the wasmtime host. */
export function debugString(text) {
  let out = '"';
  for (const ch of text) {
    const code = ch.codePointAt(0);
    if (ch === '"' || ch === '\\') {
      out += `\\${ch}`;
    } else if (ch === '\n') {
      out += '\\n';
    } else if (ch === '\r') {
      out += '\\r';
    } else if (ch === '\t') {
      out += '\\t';
    } else if (code < 0x20 || code === 0x7f) {
      out += `\\u{${code.toString(16)}}`;
    } else {
      out += ch;
    }
  }
  return `${out}"`;
}
