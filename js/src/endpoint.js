// Turning the guest's endpoint description into something the host can start.
//
// The guest passes configuration text as templates: the text as written, split into
// literals and `${VAR}` references (the grammar is the guest's, guest/src/variables.rs).
// They are resolved here, in the host, by looking each name up, so secrets kept in the
// environment never enter the sandbox. The child's environment is built here too: a small allowlist of the ambient
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
 * sends it, each text a `Template`) against `lookup`, the host's environment in production.
 *
 * @param {{command: Template, args: Template[], env: {name: string, value: Template}[], cwd?: Template, sandbox?: {env?: string[]}}} ep
 * @param {(name: string) => string | undefined} lookup
 * @returns {{command: string, args: string[], env: Record<string, string>, cwd?: string}}
 *   `env` is the child's complete environment.
 * @throws {EndpointError}
 */
export function resolveStdio(ep, lookup) {
  const command = resolve(ep.command, 'command', lookup);
  if (command.trim() === '') {
    throw new EndpointError('`command` is empty');
  }
  const args = ep.args.map((a, i) => resolve(a, `args[${i}]`, lookup));
  const cwd = ep.cwd == null ? undefined : resolve(ep.cwd, 'cwd', lookup);

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
    env[pair.name] = resolve(pair.value, `env.${pair.name}`, lookup);
  }
  return { command, args, env, cwd };
}

/** The placeholder for the `n`th `${VAR}` reference of a URL, in the guest's stand-in URL. */
export function placeholder(n) {
  return `mcpbox-ref-${n}`;
}

/**
 * Resolves a remote endpoint (`{url, headers: [{name, value}]}`, each text a `Template`) against `lookup`:
 * `${VAR}` in the URL and the header values. The URL must resolve to http:// or
 * https://. The resolved values stay in the host; the guest sees the URL's path and
 * query with a placeholder for each reference.
 *
 * @param {{url: Template, headers: {name: string, value: Template}[]}} ep
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
    throw new EndpointError(`\`url\` must start with http:// or https:// (got ${debugString(ep.url.configured)})`);
  }
  const headers = ep.headers.map((p) => [p.name, resolve(p.value, `headers.${p.name}`, lookup)]);
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
 * Configuration text as the guest hands it over (the WIT `template`): `configured` is
 * the text as written, `parts` its literals and `${VAR}` references in order.
 *
 * @typedef {{configured: string, parts: Array<{tag: 'literal', val: string} | {tag: 'variable', val: {name: string, fallback?: string}}>}} Template
 */

/**
 * `template` with every reference resolved. `field` names the place in error messages.
 *
 * @param {Template} template
 * @param {string} field
 * @param {(name: string) => string | undefined} lookup
 * @returns {string}
 * @throws {EndpointError}
 */
export function resolve(template, field, lookup) {
  return pieces(template, field, lookup)
    .map((p) => p.value ?? p.text)
    .join('');
}

/**
 * The parts of `template`, the references resolved: written text (`{ text }`) and
 * values (`{ value }`).
 *
 * @returns {Array<{text: string} | {value: string}>}
 * @throws {EndpointError}
 */
function pieces(template, field, lookup) {
  return template.parts.map((part) => {
    if (part.tag === 'literal') {
      return { text: part.val };
    }
    const { name, fallback } = part.val;
    let value = lookup(name);
    // Like the shell: `:-` also replaces a variable that is set but empty.
    if (fallback != null && (value === undefined || value === '')) {
      value = fallback;
    }
    if (value === undefined) {
      throw new EndpointError(
        `\`${field}\` uses \${${name}}, which is not set; set ${name} in the environment or write \${${name}:-default}`,
      );
    }
    return { value };
  });
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
