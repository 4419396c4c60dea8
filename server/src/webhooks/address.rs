//! Which addresses a webhook may be sent to. A project's webhook names a URL the server
//! then requests, so without a rule a project member could make the server probe its
//! own network (loopback services, the cloud's metadata address, the office's LAN). Only
//! public unicast addresses are allowed unless the operator says otherwise
//! (`--allow-private-webhooks`). The rule is applied to every address a name resolves to
//! at the moment of sending, and the request goes to an address that passed (see
//! `sender::Resolver`), so a name that changes its answer between the check and the
//! request gains nothing.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why `ip` may not receive webhooks, or `None` for a public unicast address.
pub fn refusal(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => refusal_v4(v4),
        IpAddr::V6(v6) => refusal_v6(v6),
    }
}

fn refusal_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        _ if ip.is_loopback() => "a loopback address",
        (0, ..) => "an address of this host's own network",
        (10, ..) | (172, 16..=31, _) | (192, 168, _) => "a private address",
        (100, 64..=127, _) => "a carrier-grade NAT address",
        (169, 254, _) => "a link-local address (such as a cloud's metadata service)",
        (192, 0, 0) => "an IETF protocol address",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "a documentation address",
        (198, 18..=19, _) => "a benchmarking address",
        (224..=239, ..) => "a multicast address",
        (240..=255, ..) => "a reserved address",
        _ => return None,
    })
}

fn refusal_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let segments = ip.segments();
    // Addresses that carry an IPv4 address are judged by it: mapped (::ffff:a.b.c.d),
    // NAT64 (64:ff9b::a.b.c.d) and 6to4 (2002:AABB:CCDD::).
    if let Some(v4) = ip.to_ipv4_mapped() {
        return refusal_v4(v4);
    }
    if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return refusal_v4(Ipv4Addr::from(((segments[6] as u32) << 16) | segments[7] as u32));
    }
    if segments[0] == 0x2002 {
        return refusal_v4(Ipv4Addr::from(((segments[1] as u32) << 16) | segments[2] as u32));
    }
    Some(match segments[0] {
        _ if ip.is_loopback() => "a loopback address",
        _ if ip.is_unspecified() => "the unspecified address",
        // ::a.b.c.d, deprecated and never routed.
        0 => "a reserved address",
        s if s & 0xfe00 == 0xfc00 => "a private (unique local) address",
        s if s & 0xffc0 == 0xfe80 => "a link-local address",
        s if s & 0xffc0 == 0xfec0 => "a site-local address",
        s if s & 0xff00 == 0xff00 => "a multicast address",
        0x2001 if segments[1] == 0x0db8 => "a documentation address",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(s: &str) -> bool {
        refusal(s.parse().unwrap()).is_some()
    }

    #[test]
    fn every_private_and_special_range_is_refused_by_the_rule_alone() {
        for ip in [
            "127.0.0.1",
            "127.255.255.254",
            "0.0.0.0",
            "10.0.0.1",
            "10.255.255.255",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "100.64.0.1",
            "100.127.255.255",
            "169.254.169.254",
            "192.0.0.8",
            "192.0.2.1",
            "198.51.100.7",
            "203.0.113.9",
            "198.18.0.1",
            "224.0.0.251",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "::127.0.0.1",
            "::ffff:127.0.0.1",
            "::ffff:10.1.2.3",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "2002:c0a8:0101::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "2001:db8::1",
        ] {
            assert!(refused(ip), "{ip} should be refused");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for ip in [
            "1.1.1.1",
            "8.8.8.8",
            "172.15.255.255",
            "172.32.0.1",
            "192.169.0.1",
            "100.63.255.255",
            "100.128.0.1",
            "198.20.0.1",
            "223.255.255.255",
            "2606:4700:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:0808:0808::1",
        ] {
            assert!(!refused(ip), "{ip} should pass");
        }
    }

    #[test]
    fn a_refusal_says_what_kind_of_address_it_is() {
        assert_eq!(
            refusal("169.254.169.254".parse().unwrap()),
            Some("a link-local address (such as a cloud's metadata service)")
        );
        assert_eq!(refusal("::ffff:192.168.0.1".parse().unwrap()), Some("a private address"));
    }
}
