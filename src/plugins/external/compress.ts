import compress, { type FastifyCompressOptions } from "@fastify/compress";

/**
 * Bodies under 2 KiB (every 402, problem and small result) are sent as they are: compressing them costs more than it
 * saves. Up to 64 KiB (every paid answer but the long upcoming lists, which their route compresses once and caches)
 * a body is compressed in one call: on a 2-CPU host the plugin's default streams everything over 8 KiB, and its
 * stream pipeline (zlib stream, pipeline, abort controller) cost a paid MCP tool call about 0.3 ms of CPU more than
 * compressing its ~20 kB at once (V8 profile of 500 paid calls).
 */
export const autoConfig: FastifyCompressOptions = {
  global: true,
  threshold: 2048,
  syncThreshold: 64 * 1024,
  encodings: ["br", "gzip"],
};

export default compress;
