// How an import fails the way its WIT signature allows.

/**
 * The error case of an import's `result`, as jco's glue expects it: thrown, with the
 * WIT value as `payload`. (Not an `Error`: jco turns a thrown `Error` into a trap.)
 */
export class ResultError {
  constructor(payload) {
    this.payload = payload;
  }
}
