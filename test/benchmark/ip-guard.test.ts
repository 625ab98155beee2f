import { describe, expect, it } from "vitest";
import { classifyAddress, parseIPv6 } from "../../src/benchmark/ip-guard.js";

describe("address classification", () => {
  it.each([
    ["127.0.0.1", "loopback"],
    ["127.255.255.254", "loopback"],
    ["10.0.0.1", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.1", "private"],
    ["100.64.0.1", "cgnat"],
    ["100.127.255.255", "cgnat"],
    ["169.254.1.1", "link_local"],
    ["169.254.169.254", "metadata"],
    ["0.0.0.0", "unspecified"],
    ["0.1.2.3", "unspecified"],
    ["224.0.0.1", "multicast"],
    ["255.255.255.255", "reserved"],
    ["192.0.2.10", "documentation"],
    ["198.18.0.1", "benchmarking"],
    ["::", "unspecified"],
    ["::1", "loopback"],
    ["[::1]", "loopback"],
    ["::ffff:127.0.0.1", "ipv4_mapped"],
    ["::ffff:7f00:1", "ipv4_mapped"],
    ["::ffff:8.8.8.8", "ipv4_mapped"],
    ["::127.0.0.1", "ipv4_mapped"],
    ["64:ff9b::a9fe:a9fe", "ipv4_embedded"],
    ["2002:a9fe:a9fe::1", "ipv4_embedded"],
    ["fd00:ec2::254", "metadata"],
    ["fd12:3456::1", "unique_local"],
    ["fc00::1", "unique_local"],
    ["fe80::1", "link_local"],
    ["fe80::1%eth0", "link_local"],
    ["ff02::1", "multicast"],
    ["2001:db8::1", "documentation"],
  ])("%s is %s", (address, expected) => {
    expect(classifyAddress(address)).toBe(expected);
  });

  it.each([
    ["8.8.8.8"],
    ["172.32.0.1"],
    ["100.128.0.1"],
    ["2606:4700:4700::1111"],
    ["2a00:1450:4001:80b::200e"],
  ])("%s is public", (address) => {
    expect(classifyAddress(address)).toBe("public");
  });

  it("rejects malformed literals", () => {
    expect(classifyAddress("1::2::3")).toBe("invalid");
    expect(classifyAddress("256.1.1.1")).toBe("invalid");
    expect(parseIPv6("1:2:3:4:5:6:7:8:9")).toBeNull();
    expect(parseIPv6("1:2:3:4:5:6:7:8")?.[15]).toBe(8);
  });
});
