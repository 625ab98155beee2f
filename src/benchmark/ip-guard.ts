/**
 * Address classification for the live probe's SSRF guard. Only globally routable unicast
 * addresses are "public"; everything an attacker could use to reach this host, its network or a
 * cloud metadata service is refused with a named reason.
 */

export type AddressClass =
  | "public"
  | "unspecified"
  | "loopback"
  | "private"
  | "cgnat"
  | "link_local"
  | "metadata"
  | "multicast"
  | "reserved"
  | "documentation"
  | "benchmarking"
  | "unique_local"
  | "ipv4_mapped"
  | "ipv4_embedded"
  | "invalid";

export function parseIPv4(text: string): [number, number, number, number] | null {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (m === null) return null;
  const parts = [m[1], m[2], m[3], m[4]].map(Number);
  if (parts.some((p) => p > 255)) return null;
  return parts as [number, number, number, number];
}

/** 16 bytes of an IPv6 address (zone id ignored; dotted IPv4 tail allowed), or null. */
export function parseIPv6(input: string): Uint8Array | null {
  let text = input.startsWith("[") && input.endsWith("]") ? input.slice(1, -1) : input;
  const zone = text.indexOf("%");
  if (zone >= 0) text = text.slice(0, zone);
  if (!text.includes(":")) return null;
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const toGroups = (part: string): number[] | null => {
    if (part === "") return [];
    const out: number[] = [];
    const pieces = part.split(":");
    for (let i = 0; i < pieces.length; i++) {
      const piece = pieces[i] as string;
      if (i === pieces.length - 1 && piece.includes(".")) {
        const v4 = parseIPv4(piece);
        if (v4 === null) return null;
        out.push((v4[0] << 8) | v4[1], (v4[2] << 8) | v4[3]);
      } else {
        if (!/^[0-9a-fA-F]{1,4}$/.test(piece)) return null;
        out.push(Number.parseInt(piece, 16));
      }
    }
    return out;
  };
  const head = toGroups(halves[0] as string);
  const tail = halves.length === 2 ? toGroups(halves[1] as string) : [];
  if (head === null || tail === null) return null;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
  const groups = [...head, ...new Array<number>(halves.length === 2 ? missing : 0).fill(0), ...tail];
  const bytes = new Uint8Array(16);
  groups.forEach((g, i) => {
    bytes[i * 2] = g >> 8;
    bytes[i * 2 + 1] = g & 0xff;
  });
  return bytes;
}

function inV4(ip: readonly number[], base: readonly number[], bits: number): boolean {
  const a = ((ip[0]! << 24) | (ip[1]! << 16) | (ip[2]! << 8) | ip[3]!) >>> 0;
  const b = ((base[0]! << 24) | (base[1]! << 16) | (base[2]! << 8) | base[3]!) >>> 0;
  if (bits === 0) return true;
  const mask = (0xffffffff << (32 - bits)) >>> 0;
  return (a & mask) === (b & mask);
}

export function classifyIPv4(ip: readonly number[]): AddressClass {
  if (ip[0] === 169 && ip[1] === 254 && ip[2] === 169 && ip[3] === 254) return "metadata";
  if (inV4(ip, [0, 0, 0, 0], 8)) return "unspecified";
  if (inV4(ip, [127, 0, 0, 0], 8)) return "loopback";
  if (inV4(ip, [10, 0, 0, 0], 8) || inV4(ip, [172, 16, 0, 0], 12) || inV4(ip, [192, 168, 0, 0], 16))
    return "private";
  if (inV4(ip, [100, 64, 0, 0], 10)) return "cgnat";
  if (inV4(ip, [169, 254, 0, 0], 16)) return "link_local";
  if (inV4(ip, [192, 0, 0, 0], 24)) return "reserved";
  if (inV4(ip, [192, 0, 2, 0], 24) || inV4(ip, [198, 51, 100, 0], 24) || inV4(ip, [203, 0, 113, 0], 24)) {
    return "documentation";
  }
  if (inV4(ip, [198, 18, 0, 0], 15)) return "benchmarking";
  if (inV4(ip, [224, 0, 0, 0], 4)) return "multicast";
  if (inV4(ip, [240, 0, 0, 0], 4)) return "reserved"; // includes 255.255.255.255
  return "public";
}

function startsWith(bytes: Uint8Array, prefix: readonly number[], bits: number): boolean {
  for (let i = 0; i < bits; i++) {
    const byte = i >> 3;
    const bit = 7 - (i & 7);
    if (((bytes[byte]! >> bit) & 1) !== ((prefix[byte]! >> bit) & 1)) return false;
  }
  return true;
}

export function classifyIPv6(bytes: Uint8Array): AddressClass {
  const allZeroUpTo = (n: number) => bytes.subarray(0, n).every((b) => b === 0);
  if (bytes.every((b) => b === 0)) return "unspecified";
  if (allZeroUpTo(15) && bytes[15] === 1) return "loopback";
  // fd00:ec2::254 — the AWS metadata service over IPv6.
  const ec2 = parseIPv6("fd00:ec2::254")!;
  if (bytes.every((b, i) => b === ec2[i])) return "metadata";
  // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (deprecated compatible): refused outright, because
  // socket layers treat them as the IPv4 address they carry.
  if (allZeroUpTo(10) && bytes[10] === 0xff && bytes[11] === 0xff) return "ipv4_mapped";
  if (allZeroUpTo(12)) return "ipv4_mapped";
  // 64:ff9b::/96 (NAT64) and 2002::/16 (6to4) carry an IPv4 address too.
  if (startsWith(bytes, [0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0], 96)) return "ipv4_embedded";
  if (startsWith(bytes, [0x20, 0x02], 16)) return "ipv4_embedded";
  if (startsWith(bytes, [0xfc], 7)) return "unique_local";
  if (startsWith(bytes, [0xfe, 0x80], 10)) return "link_local";
  if (startsWith(bytes, [0xfe, 0xc0], 10)) return "reserved"; // deprecated site-local
  if (startsWith(bytes, [0xff], 8)) return "multicast";
  if (startsWith(bytes, [0x20, 0x01, 0x0d, 0xb8], 32)) return "documentation";
  if (startsWith(bytes, [0x01, 0x00, 0, 0, 0, 0, 0, 0], 64)) return "reserved"; // discard-only
  if (startsWith(bytes, [0x20, 0x01, 0x00, 0x00], 32)) return "reserved"; // Teredo
  return "public";
}

/** Classifies an IP literal (IPv4 dotted quad or IPv6, brackets allowed). */
export function classifyAddress(address: string): AddressClass {
  const v4 = parseIPv4(address);
  if (v4 !== null) return classifyIPv4(v4);
  const v6 = parseIPv6(address);
  if (v6 !== null) return classifyIPv6(v6);
  return "invalid";
}

export function isIpLiteral(host: string): boolean {
  return parseIPv4(host) !== null || parseIPv6(host) !== null;
}
