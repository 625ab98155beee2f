import { createServer } from "node:net";

/** A free TCP port on 127.0.0.1, for processes that must be told their port in advance (PORT=0 cannot be read back). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const address = s.address();
      const port = typeof address === "object" && address ? address.port : 0;
      s.close(() => resolve(port));
    });
  });
}
