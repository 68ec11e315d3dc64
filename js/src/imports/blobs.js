// `mcpbox:runtime/blobs`: oversized results and media written to files in the result
// directory (../blobs.js), shared by every instance of a runtime.

import { Results } from '../blobs.js';
import { ResultError } from './errors.js';

/**
 * The `mcpbox:runtime/blobs` interface over the result directory.
 *
 * @param {{dir: string, maxFileBytes: number, maxTotalBytes: number}} options
 *   `McpBox.open`'s `results`
 */
export function blobs(options) {
  const results = new Results(options.dir, options.maxFileBytes, options.maxTotalBytes);
  return {
    write: (server, name, _mimeType, data) => {
      const written = results.write(server, name, data);
      if (written.err !== undefined) {
        throw new ResultError(written.err);
      }
      return written.ok;
    },
  };
}
