/** DESIGN.md: an Idempotency-Key is 1–255 visible ASCII characters. */
const KEY = /^[\x21-\x7e]{1,255}$/;

export const validIdempotencyKey = (key: string): boolean => KEY.test(key);
