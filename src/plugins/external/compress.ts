import compress, { type FastifyCompressOptions } from "@fastify/compress";

/**
 * Bodies under 2 KiB (every 402, problem and small result) are sent as they are: compressing them costs more than it
 * saves.
 */
export const autoConfig: FastifyCompressOptions = {
  global: true,
  threshold: 2048,
  encodings: ["br", "gzip"],
};

export default compress;
