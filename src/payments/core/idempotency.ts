/** An Idempotency-Key is 1–255 visible ASCII characters: enough for a UUID or a hash, never a control character. */
const KEY = /^[\x21-\x7e]{1,255}$/;

export const validIdempotencyKey = (key: string): boolean => KEY.test(key);
