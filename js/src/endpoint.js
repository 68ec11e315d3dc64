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
 * @param {{command: string, args: string[], env: {name: string, value: string}[], cwd?: string}} ep
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
  for (const name of AMBIENT_ALLOWLIST) {
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

/** The placeholder for the `n`th `${VAR}` reference of a URL, in the guest's stand-in URL. */
export function placeholder(n) {
  return `mcpbox-ref-${n}`;
}

/**
 * Resolves a remote endpoint (`{url, headers: [{name, value}]}`) against `lookup`:
 * `${VAR}` in the URL and the header values. The URL must resolve to http:// or
 * https://. The resolved values stay in the host; the guest sees the URL's path and
 * query with a placeholder for each reference.
 *
 * @param {{url: string, headers: {name: string, value: string}[]}} ep
 * @param {(name: string) => string | undefined} lookup
 * @returns {{url: string, headers: [string, string][], pathWithPlaceholders: string | null, values: string[]}}
 *   `pathWithPlaceholders` is the configured path and query, each reference replaced
 *   by its `placeholder`, or `null` when the scheme or authority is itself a
 *   reference; `values[n]` is what placeholder `n` stands for
 * @throws {EndpointError}
 */
export function resolveHttp(ep, lookup) {
  let url = '';
  let tokenized = '';
  const values = [];
  for (const piece of pieces(ep.url, 'url', lookup)) {
    if (piece.value === undefined) {
      url += piece.text;
      tokenized += piece.text;
    } else {
      url += piece.value;
      tokenized += placeholder(values.length);
      values.push(piece.value);
    }
  }
  const lower = url.replace(/[A-Z]/g, (c) => c.toLowerCase());
  if (!(lower.startsWith('http://') || lower.startsWith('https://'))) {
    // As configured: a resolved value may be a secret.
    throw new EndpointError(`\`url\` must start with http:// or https:// (got ${debugString(ep.url)})`);
  }
  const headers = ep.headers.map((p) => [p.name, interpolate(p.value, `headers.${p.name}`, lookup)]);
  return { url, headers, pathWithPlaceholders: pathAndQuery(tokenized), values };
}

/**
 * The path and query of an `http(s)://` URL as written (`/` for an empty path), or
 * `null` when `text` does not start with a written-out scheme.
 */
function pathAndQuery(text) {
  const scheme = /^https?:\/\//i.exec(text);
  if (scheme === null) {
    return null;
  }
  const rest = text.slice(scheme[0].length);
  const end = rest.search(/[/?#]/);
  const tail = (end === -1 ? '' : rest.slice(end)).split('#')[0];
  if (tail === '') {
    return '/';
  }
  return tail.startsWith('?') ? `/${tail}` : tail;
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
  return pieces(text, field, lookup)
    .map((p) => p.value ?? p.text)
    .join('');
}

/**
 * `text` split into written text (`{ text }`) and resolved references (`{ value }`).
 *
 * @returns {Array<{text: string} | {value: string}>}
 * @throws {EndpointError}
 */
function pieces(text, field, lookup) {
  const out = [];
  let rest = text;
  for (let start = rest.indexOf('${'); start !== -1; start = rest.indexOf('${')) {
    out.push({ text: rest.slice(0, start) });
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
    out.push({ value });
    rest = after.slice(end + 1);
  }
  out.push({ text: rest });
  return out;
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
