// `mcpbox:runtime/remote`: the guest's grants to reach configured remote servers, on
// the main thread.
//
// Opening a grant is where the host's duties for a remote server happen: the network
// policy is checked (the denial names the server and the URL as configured), `${VAR}`
// references in the URL and the headers are resolved from the host's environment, and
// the results are kept here, out of the guest's reach. The guest gets a stand-in URL on
// a reserved authority of its own, `g<N>.mcpbox.internal` (`.internal` is reserved for
// private use and never resolves on the internet), whose path and query are the
// configured ones with a placeholder for every reference; wasi_http.js maps its
// requests back. A port of host/src/imports/remote.rs: same rules, same messages.

import { EndpointError, debugString, placeholder, resolveHttp } from './endpoint.js';

/** The reserved domain of stand-in authorities. */
export const STAND_IN_DOMAIN = '.mcpbox.internal';

/** A header name as `http::HeaderName` accepts it (an RFC 9110 token). */
export const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** A header value as `http::HeaderValue::from_str` accepts it: visible ASCII, space, tab. */
const VISIBLE = /^[\t\x20-\x7e]*$/;

/** One configured remote server, resolved: what requests under its grant get. */
export class Granted {
  /**
   * @param {string} server the configured name
   * @param {URL} url the resolved URL
   * @param {[string, string][]} headers the configured headers, resolved
   * @param {string} standInPath the stand-in URL's path and query: a request for exactly
   *   this goes to `url`
   * @param {string[]} values the value of each placeholder, by number
   */
  constructor(server, url, headers, standInPath, values) {
    this.server = server;
    this.url = url;
    this.headers = headers;
    this.standInPath = standInPath;
    this.values = values;
  }

  /**
   * Where a request for `path` (path and query) on the stand-in authority goes: the
   * configured URL itself, or that path on the configured origin with the
   * placeholders replaced by their values. `null` when the result is not on the
   * configured origin.
   *
   * @returns {URL | null}
   */
  target(path) {
    if (path === this.standInPath) {
      return this.url;
    }
    let url;
    try {
      url = new URL(`${this.url.origin}${this.#substitute(path)}`);
    } catch {
      return null;
    }
    return url.origin === this.url.origin ? url : null;
  }

  /** Whether an absolute `url` is on the configured origin (scheme, host, port). */
  sameOrigin(url) {
    try {
      return new URL(url).origin === this.url.origin;
    } catch {
      return false;
    }
  }

  /**
   * `text` with every placeholder replaced by its value (the highest number first, so
   * `mcpbox-ref-1` never eats the start of `mcpbox-ref-12`).
   */
  #substitute(text) {
    for (let n = this.values.length - 1; n >= 0; n--) {
      text = text.replaceAll(placeholder(n), this.values[n]);
    }
    return text;
  }
}

/** Every open grant of one runtime, by stand-in authority. */
export class Grants {
  #next = 0;
  /** @type {Map<string, Granted>} */
  #byAuthority = new Map();

  /** @param {{allowNetwork: boolean}} policy */
  constructor(policy) {
    this.policy = policy;
  }

  /**
   * Opens a grant for `server`, applying the network policy; `${VAR}` values come from
   * `lookup` (the host's environment in production).
   *
   * @param {string} server
   * @param {{url: import('./endpoint.js').Template, headers: {name: string, value: import('./endpoint.js').Template}[]}} endpoint
   *   as configured, each text split by the guest
   * @returns {{tag: 'ok', val: {authority: string, url: string}} | {tag: 'err', val: {tag: string, val: string}}}
   *   the WIT `result<grant, transport-error>`, the grant as its authority and stand-in URL
   */
  open(server, endpoint, lookup = (name) => process.env[name]) {
    if (!this.policy.allowNetwork) {
      // The URL as configured, before `${VAR}` resolution: no secret goes in a message.
      return err(
        'denied',
        `server \`${server}\`: the policy does not allow network connections, so ${endpoint.url.configured} was not contacted (allow them with \`allowNetwork: true\`)`,
      );
    }
    const invalid = (text) => err('invalid-endpoint', `server \`${server}\`: ${text}`);
    let spec;
    try {
      spec = resolveHttp(endpoint, lookup);
    } catch (error) {
      if (error instanceof EndpointError) {
        return invalid(error.message);
      }
      throw error;
    }
    let url;
    try {
      url = new URL(spec.url);
    } catch {
      return invalid(`\`url\` ${debugString(endpoint.url.configured)} is not a URL: ${urlProblem(spec.url)}`);
    }
    for (const [name, value] of spec.headers) {
      if (!TOKEN.test(name)) {
        return invalid(`\`headers.${name}\` is not a valid header name`);
      }
      if (!VISIBLE.test(value)) {
        return invalid(
          `\`headers.${name}\` has a value that cannot be sent in an HTTP header (control characters or non-ASCII)`,
        );
      }
    }
    const authority = `g${this.#next}${STAND_IN_DOMAIN}`;
    this.#next += 1;
    const written = `http://${authority}${spec.pathWithPlaceholders ?? '/'}`;
    let standIn;
    try {
      // Normalised as the guest will send it (`wasi:http` takes path-with-query as is).
      standIn = new URL(written);
    } catch {
      return invalid(`\`url\` ${debugString(endpoint.url.configured)} has a path that is not valid: ${urlProblem(written)}`);
    }
    const granted = new Granted(server, url, spec.headers, `${standIn.pathname}${standIn.search}`, spec.values);
    this.#byAuthority.set(authority, granted);
    return { tag: 'ok', val: { authority, url: standIn.href } };
  }

  /** The grant a stand-in authority names, if it is open. */
  get(authority) {
    return this.#byAuthority.get(authority);
  }

  /** `grant.same-origin`: whether `url` is on the granted server's origin. */
  sameOrigin(authority, url) {
    return this.#byAuthority.get(authority)?.sameOrigin(url) ?? false;
  }

  /** Forgets a grant: requests naming its authority are refused from now on. */
  drop(authority) {
    this.#byAuthority.delete(authority);
  }
}

function err(tag, val) {
  return { tag: 'err', val: { tag, val } };
}

/**
 * Why a URL does not parse, in the words of the `url` crate (which the wasmtime host
 * uses) where they can be told apart: WHATWG's parser in Node only says "Invalid URL".
 */
function urlProblem(text) {
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:/.test(text)) {
    return 'relative URL without a base';
  }
  const m = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/([^/?#]*)/.exec(text);
  if (m) {
    const authority = m[1].slice(m[1].lastIndexOf('@') + 1);
    if (authority === '') {
      return 'empty host';
    }
    const port = /:([^\]:]*)$/.exec(authority);
    if (port && (!/^\d*$/.test(port[1]) || Number(port[1]) > 65535)) {
      return 'invalid port number';
    }
    if (authority.startsWith('[')) {
      return 'invalid IPv6 address';
    }
  }
  return 'invalid international domain name';
}
