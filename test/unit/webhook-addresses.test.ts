import { describe, expect, it } from "vitest";
import { addressRefusal, hostRefusalText, ipAddressOf } from "@cm/domain";

const REFUSING = { allowPrivateNetworks: false, ownAddresses: [] };
const ALLOWING = { allowPrivateNetworks: true, ownAddresses: [] };

/** Each address, why it is refused, and whether WEBHOOK_ALLOW_PRIVATE_NETWORKS allows it. */
const SPECIAL: [address: string, why: string, privateNetwork: boolean][] = [
  ["0.0.0.0", "in 0.0.0.0/8 (this network)", false],
  ["0.1.2.3", "in 0.0.0.0/8 (this network)", false],
  ["10.1.2.3", "in 10.0.0.0/8 (private-use)", true],
  ["100.64.0.1", "in 100.64.0.0/10 (shared address space)", true],
  ["100.127.255.255", "in 100.64.0.0/10 (shared address space)", true],
  ["127.0.0.1", "in 127.0.0.0/8 (loopback)", true],
  ["127.255.0.9", "in 127.0.0.0/8 (loopback)", true],
  ["169.254.169.254", "in 169.254.0.0/16 (link-local)", false],
  ["172.16.0.1", "in 172.16.0.0/12 (private-use)", true],
  ["172.31.255.255", "in 172.16.0.0/12 (private-use)", true],
  ["192.0.0.9", "in 192.0.0.0/24 (IETF protocol assignments)", false],
  ["192.0.2.1", "in 192.0.2.0/24 (documentation)", false],
  ["192.0.2.2", "in 192.0.2.0/24 (documentation)", false],
  ["192.31.196.1", "in 192.31.196.0/24 (AS112)", false],
  ["192.52.193.1", "in 192.52.193.0/24 (AMT)", false],
  ["192.88.99.1", "in 192.88.99.0/24 (6to4 relay anycast)", false],
  ["192.168.1.1", "in 192.168.0.0/16 (private-use)", true],
  ["192.175.48.6", "in 192.175.48.0/24 (AS112 direct delegation)", false],
  ["198.18.0.1", "in 198.18.0.0/15 (benchmarking)", false],
  ["198.19.255.255", "in 198.18.0.0/15 (benchmarking)", false],
  ["198.51.100.7", "in 198.51.100.0/24 (documentation)", false],
  ["203.0.113.7", "in 203.0.113.0/24 (documentation)", false],
  ["224.0.0.251", "in 224.0.0.0/4 (multicast)", false],
  ["239.255.255.250", "in 224.0.0.0/4 (multicast)", false],
  ["240.0.0.1", "in 240.0.0.0/4 (reserved)", false],
  ["255.255.255.255", "in 255.255.255.255/32 (limited broadcast)", false],
  ["::", "in ::/128 (unspecified)", false],
  ["::1", "in ::1/128 (loopback)", true],
  ["::ffff:127.0.0.1", "in 127.0.0.0/8 (loopback), within ::ffff:0:0/96 (IPv4-mapped)", true],
  ["::ffff:a9fe:a9fe", "in 169.254.0.0/16 (link-local), within ::ffff:0:0/96 (IPv4-mapped)", false],
  ["::ffff:192.0.2.2", "in 192.0.2.0/24 (documentation), within ::ffff:0:0/96 (IPv4-mapped)", false],
  ["::127.0.0.1", "outside 2000::/3 (global unicast)", false],
  // Dialled as IPv6, to a translator: no switch makes a private network of it.
  ["64:ff9b::7f00:1", "in 127.0.0.0/8 (loopback), within 64:ff9b::/96 (IPv4/IPv6 translation)", false],
  ["64:ff9b::c000:202", "in 192.0.2.0/24 (documentation), within 64:ff9b::/96 (IPv4/IPv6 translation)", false],
  ["2002:a00:1::1", "in 10.0.0.0/8 (private-use), within 2002::/16 (6to4)", false],
  ["64:ff9b::192.0.2.2", "in 192.0.2.0/24 (documentation), within 64:ff9b::/96 (IPv4/IPv6 translation)", false],
  ["64:ff9b:1::808:808", "in 64:ff9b:1::/48 (local-use IPv4/IPv6 translation)", false],
  ["100::1", "in 100::/64 (discard-only)", false],
  ["100:0:0:1::1", "in 100:0:0:1::/64 (dummy prefix)", false],
  ["2001::1", "in 2001::/23 (IETF protocol assignments)", false],
  ["2001:2::1", "in 2001::/23 (IETF protocol assignments)", false],
  ["2001:1ff::1", "in 2001::/23 (IETF protocol assignments)", false],
  ["2001:db8::1", "in 2001:db8::/32 (documentation)", false],
  ["2002:a9fe:a9fe::1", "in 169.254.0.0/16 (link-local), within 2002::/16 (6to4)", false],
  ["2002:c000:202::1", "in 192.0.2.0/24 (documentation), within 2002::/16 (6to4)", false],
  ["2620:4f:8000::1", "in 2620:4f:8000::/48 (AS112 direct delegation)", false],
  ["3fff:fff::1", "in 3fff::/20 (documentation)", false],
  ["5f00::1", "in 5f00::/16 (segment routing SIDs)", false],
  ["fd00::2", "in fc00::/7 (unique-local)", true],
  ["fc00::1", "in fc00::/7 (unique-local)", true],
  ["fe80::1", "in fe80::/10 (link-local)", false],
  ["febf::1", "in fe80::/10 (link-local)", false],
  ["fec0::1", "in fec0::/10 (site-local)", false],
  ["ff02::1", "in ff00::/8 (multicast)", false],
  ["4000::1", "outside 2000::/3 (global unicast)", false],
];

describe("webhook addresses", () => {
  it.each(SPECIAL)("refuses %s: %s", (spelled, why, privateNetwork) => {
    const address = ipAddressOf(spelled)?.text;
    expect(addressRefusal(spelled, REFUSING)).toEqual({ address, why, private: privateNetwork });
    const allowed = addressRefusal(spelled, ALLOWING);
    expect(allowed, "with WEBHOOK_ALLOW_PRIVATE_NETWORKS=true").toEqual(
      privateNetwork ? null : { address, why, private: false },
    );
  });

  it.each([
    "8.8.8.8",
    "1.1.1.1",
    "93.184.215.14",
    "9.255.255.255",
    "11.0.0.0",
    "100.63.255.255",
    "100.128.0.0",
    "126.255.255.255",
    "128.0.0.0",
    "169.253.255.255",
    "172.15.255.255",
    "172.32.0.1",
    "192.0.1.255",
    "192.0.3.0",
    "192.167.255.255",
    "198.17.255.255",
    "198.20.0.0",
    "223.255.255.255",
    "::ffff:8.8.8.8",
    "64:ff9b::808:808",
    "2002:808:808::1",
    "2001:200::1",
    "2001:db9::1",
    "2606:4700:4700::1111",
    "2a00:1450:4001:80e::200e",
    "3fff:1000::1",
  ])("lets %s be reached", (address) => {
    expect(addressRefusal(address, REFUSING)).toBeNull();
  });

  it.each([
    ["2130706433", "127.0.0.1"],
    ["0x7f.1", "127.0.0.1"],
    ["0177.0.0.1", "127.0.0.1"],
    ["0x7f000001", "127.0.0.1"],
    ["127.1", "127.0.0.1"],
    ["127.0.0.1.", "127.0.0.1"],
    ["3221225986", "192.0.2.2"],
    ["0xc0.0.02.2", "192.0.2.2"],
    ["[::1]", "::1"],
    ["[0:0:0:0:0:0:0:1]", "::1"],
    ["::FFFF:127.0.0.1", "::ffff:7f00:1"],
    ["[::ffff:7f00:1]", "::ffff:7f00:1"],
    ["fe80::1%eth0", "fe80::1"],
    ["[FE80::1%25eth0]", "fe80::1"],
    ["[2001:DB8:0:0::1]", "2001:db8::1"],
  ])("reads %s as %s, as a URL's host is read", (spelled, address) => {
    expect(ipAddressOf(spelled)?.text).toBe(address);
    expect(addressRefusal(spelled, REFUSING)?.address).toBe(address);
  });

  it.each([
    "localhost",
    "localhost.",
    "hooks.example.com",
    "127.0.0.1.example.com",
    "1.2.3.4.5",
    "::1::",
    "",
    "a@127.0.0.1",
  ])("reads %s as a name, not an address", (name) => {
    expect(ipAddressOf(name)).toBeNull();
    expect(addressRefusal(name, REFUSING)).toEqual({ address: name, why: "not an IP address", private: false });
  });

  it("refuses the host's own addresses, however spelled, unless private networks are allowed", () => {
    const own = { allowPrivateNetworks: false, ownAddresses: ["8.8.4.4", "2a00:1450::5", "fe80::fc:ff:fe00:1%eth0"] };
    const why = "an address of this host";
    expect(addressRefusal("8.8.4.4", own)).toEqual({ address: "8.8.4.4", why, private: true });
    expect(addressRefusal("134743044", own)).toEqual({ address: "8.8.4.4", why, private: true });
    expect(addressRefusal("::ffff:8.8.4.4", own)).toEqual({
      address: "::ffff:808:404",
      why: `${why}, within ::ffff:0:0/96 (IPv4-mapped)`,
      private: true,
    });
    expect(addressRefusal("[2a00:1450:0::5]", own)).toEqual({ address: "2a00:1450::5", why, private: true });
    expect(addressRefusal("8.8.8.8", own)).toBeNull();
    expect(addressRefusal("8.8.4.4", { ...own, allowPrivateNetworks: true })).toBeNull();
    expect(addressRefusal("fe80::fc:ff:fe00:1", own)?.why).toBe(why);
    // But not inside a NAT64 or 6to4 address, which goes out as IPv6 to a translator.
    expect(addressRefusal("64:ff9b::808:404", { ...own, allowPrivateNetworks: true })).toMatchObject({
      why: `${why}, within 64:ff9b::/96 (IPv4/IPv6 translation)`,
      private: false,
    });
  });

  it("says why a host is refused, address by address, and whether the switch allows it", () => {
    const loopback = addressRefusal("127.0.0.1", REFUSING)!;
    const documentation = addressRefusal("192.0.2.7", REFUSING)!;
    const switchText =
      "WEBHOOK_ALLOW_PRIVATE_NETWORKS=true allows loopback, private-use, shared and unique-local networks and the host's own addresses";
    expect(hostRefusalText("127.0.0.1", [loopback])).toBe(`127.0.0.1 is in 127.0.0.0/8 (loopback); ${switchText}`);
    expect(hostRefusalText("192.0.2.7", [documentation])).toBe(
      "192.0.2.7 is in 192.0.2.0/24 (documentation), which no setting allows",
    );
    expect(hostRefusalText("hooks.test", [documentation, loopback])).toBe(
      "hooks.test resolves only to addresses webhooks do not reach: 192.0.2.7 is in 192.0.2.0/24 (documentation), " +
        `127.0.0.1 is in 127.0.0.0/8 (loopback); ${switchText}`,
    );
  });
});
