import { Worker } from "node:worker_threads";

/**
 * JSON parsing off the main thread: one long-lived worker, so a large answer never stalls the requests being served.
 * The worker is plain JavaScript evaluated from this string, so it runs the same under tsx, vitest, the esbuild bundle
 * and the compiled build (no module path to resolve). The bytes are transferred, not copied.
 */
const WORKER_SOURCE = `
const { parentPort } = require("node:worker_threads");
parentPort.on("message", ({ id, bytes }) => {
  const text = new TextDecoder().decode(bytes);
  if (text.trim() === "") return parentPort.postMessage({ id, error: "empty answer" });
  if (/^\\s*</.test(text)) return parentPort.postMessage({ id, error: "HTML page instead of JSON" });
  let value;
  try {
    value = JSON.parse(text);
  } catch {
    return parentPort.postMessage({ id, error: "not valid JSON (" + bytes.length + " bytes; cut short?)" });
  }
  parentPort.postMessage({ id, value });
});
`;

type Parsed = { value: unknown } | { error: string };

let worker: Worker | null = null;
let nextId = 0;
const pending = new Map<number, (r: Parsed) => void>();

function theWorker(): Worker {
  if (worker) return worker;
  const w = new Worker(WORKER_SOURCE, { eval: true });
  // Idle, it keeps no process alive; while a parse is pending it is referenced (see parseJsonOffThread).
  w.unref();
  w.on("message", (m: { id: number } & Parsed) => {
    const done = pending.get(m.id);
    pending.delete(m.id);
    if (pending.size === 0) w.unref();
    done?.("error" in m ? { error: m.error } : { value: m.value });
  });
  const fail = () => {
    if (worker === w) worker = null;
    for (const [id, done] of pending) {
      pending.delete(id);
      done({ error: "parser stopped" });
    }
  };
  w.on("error", fail);
  w.on("exit", fail);
  worker = w;
  return w;
}

/** Parses UTF-8 JSON bytes in the worker; `{error}` names why it is not JSON (empty, an HTML page, cut short). */
export function parseJsonOffThread(bytes: Uint8Array): Promise<Parsed> {
  const w = theWorker();
  const id = nextId++;
  return new Promise((resolve) => {
    pending.set(id, resolve);
    w.ref();
    // A private copy is transferred: the caller's buffer may be a view on a larger one.
    const copy = bytes.slice();
    w.postMessage({ id, bytes: copy }, [copy.buffer]);
  });
}
