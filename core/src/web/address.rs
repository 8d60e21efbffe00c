//! The addresses a fetch never reaches: the server's own machine and networks (loopback,
//! private, link-local, unspecified, multicast, broadcast, shared and reserved ranges), in
//! IPv4, IPv6 and the IPv6 forms that carry an IPv4 address (mapped, compatible, NAT64, 6to4).
//! A model must not reach what only the server can, such as a cloud's metadata service.
//!
//! `RUMMY_WEB_ALLOW_PRIVATE` lists addresses and ranges let through anyway ([`AllowList`]):
//! it exists for tests of a loopback page, and is dangerous anywhere else.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why an address is never fetched from, as the model reads it.
pub fn refusal(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => refusal_v4(v4),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => refusal_v4(v4),
            None => refusal_v6(v6),
        },
    }
}

fn refusal_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    // Broadcast and 240/4, documentation, 192.0.0/24 (protocol assignments), 198.18/15
    // (benchmarking): no public service lives there.
    let reserved = a >= 240
        || ip.is_documentation()
        || (a == 192 && b == 0 && c == 0)
        || (a == 198 && (18..20).contains(&b));
    Some(if ip.is_loopback() {
        "loopback"
    } else if ip.is_private() || (a == 100 && (64..128).contains(&b)) {
        "private"
    } else if ip.is_link_local() {
        "link-local"
    } else if a == 0 {
        "unspecified"
    } else if ip.is_multicast() {
        "multicast"
    } else if reserved {
        "reserved"
    } else {
        return None;
    })
}

fn refusal_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let first = ip.segments()[0];
    Some(if ip.is_loopback() {
        "loopback"
    } else if ip.is_unspecified() {
        "unspecified"
    } else if first & 0xfe00 == 0xfc00 {
        "private"
    } else if first & 0xffc0 == 0xfe80 || first & 0xffc0 == 0xfec0 {
        "link-local"
    } else if ip.is_multicast() {
        "multicast"
    } else if first == 0x2001 && ip.segments()[1] == 0x0db8 {
        "reserved"
    } else if first == 0x0100 && ip.segments()[1..4] == [0, 0, 0] {
        // 100::/64, the discard prefix.
        "reserved"
    } else {
        return None;
    })
}

/// The IPv4 address an IPv6 one carries, in the forms a connection would reach it by:
/// IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`), NAT64 (`64:ff9b::/96`) and
/// 6to4 (`2002:aabb:ccdd::/16`).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let tail =
        |hi: u16, lo: u16| Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8);
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some(v4);
    }
    match s {
        // `::` and `::1` are IPv6's own unspecified and loopback addresses.
        [0, 0, 0, 0, 0, 0, 0, 0 | 1] => None,
        [0, 0, 0, 0, 0, 0, hi, lo] => Some(tail(hi, lo)),
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => Some(tail(hi, lo)),
        [0x2002, hi, lo, ..] => Some(tail(hi, lo)),
        _ => None,
    }
}

/// Addresses and ranges let through despite [`refusal`] (`RUMMY_WEB_ALLOW_PRIVATE`: `a.b.c.d`,
/// `a.b.c.d/n`, an IPv6 address or range, separated by commas or spaces).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowList(Vec<(IpAddr, u8)>);

impl AllowList {
    /// Reads the list; the entry it cannot read is the error.
    pub fn parse(text: &str) -> Result<AllowList, String> {
        let mut ranges = Vec::new();
        for entry in text
            .split([',', ' '])
            .map(str::trim)
            .filter(|e| !e.is_empty())
        {
            let (addr, bits) = match entry.split_once('/') {
                Some((addr, bits)) => (addr, Some(bits)),
                None => (entry, None),
            };
            let ip: IpAddr = addr
                .parse()
                .map_err(|_| format!("\"{entry}\" is no address or range"))?;
            let max = if ip.is_ipv4() { 32 } else { 128 };
            let bits = match bits {
                None => max,
                Some(bits) => bits
                    .parse::<u8>()
                    .ok()
                    .filter(|b| *b <= max)
                    .ok_or_else(|| format!("\"{entry}\" has no prefix length of 0 to {max}"))?,
            };
            ranges.push((ip, bits));
        }
        Ok(AllowList(ranges))
    }

    /// Whether `ip` is in one of the ranges.
    pub fn contains(&self, ip: IpAddr) -> bool {
        self.0.iter().any(|&(range, bits)| match (range, ip) {
            (IpAddr::V4(r), IpAddr::V4(i)) => {
                prefix(u128::from(u32::from(r)), u128::from(u32::from(i)), bits, 32)
            }
            (IpAddr::V6(r), IpAddr::V6(i)) => prefix(u128::from(r), u128::from(i), bits, 128),
            _ => false,
        })
    }

    /// Whether nothing is let through.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Whether the first `bits` of two `width`-bit numbers agree.
fn prefix(a: u128, b: u128, bits: u8, width: u32) -> bool {
    let shift = width - u32::from(bits);
    shift >= width || (a >> shift) == (b >> shift)
}

/// Why a fetch may not connect to `ip`, unless `allowed` lets it through.
pub fn check(ip: IpAddr, allowed: &AllowList) -> Result<(), String> {
    match refusal(ip) {
        Some(why) if !allowed.contains(ip) => Err(format!(
            "{ip} is a {why} address, which a fetch never reaches"
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// The server's own machine and networks are refused in every form that reaches them; a
    /// public address is not.
    #[test]
    fn private_addresses_are_refused_in_every_form() {
        let cases = [
            ("127.0.0.1", Some("loopback")),
            ("10.0.0.1", Some("private")),
            ("172.16.5.4", Some("private")),
            ("192.168.1.1", Some("private")),
            ("100.64.0.1", Some("private")),
            ("169.254.169.254", Some("link-local")),
            ("0.0.0.0", Some("unspecified")),
            ("224.0.0.1", Some("multicast")),
            ("255.255.255.255", Some("reserved")),
            ("::1", Some("loopback")),
            ("::", Some("unspecified")),
            ("fd00::1", Some("private")),
            ("fe80::1", Some("link-local")),
            ("::ffff:127.0.0.1", Some("loopback")),
            ("::ffff:169.254.169.254", Some("link-local")),
            ("::10.0.0.1", Some("private")),
            ("64:ff9b::a9fe:a9fe", Some("link-local")),
            ("2002:0a00:0001::1", Some("private")),
            ("93.184.216.34", None),
            ("2606:2800:220:1:248:1893:25c8:1946", None),
            ("::ffff:93.184.216.34", None),
        ];
        let got: Vec<(&str, Option<&str>)> = cases
            .iter()
            .map(|&(ip, _)| (ip, refusal(ip.parse().unwrap())))
            .collect();
        assert_eq!(got, cases);
    }

    /// The allow list lets through its addresses and ranges alone; a bad entry is named.
    #[test]
    fn the_allow_list_lets_its_ranges_through() {
        let allowed = AllowList::parse("127.0.0.1, 10.1.0.0/16 ::1").unwrap();
        let got: Vec<Result<(), String>> =
            ["127.0.0.1", "127.0.0.2", "10.1.2.3", "10.2.0.1", "::1"]
                .iter()
                .map(|ip| check(ip.parse().unwrap(), &allowed))
                .collect();
        assert_eq!(
            got,
            [
                Ok(()),
                Err("127.0.0.2 is a loopback address, which a fetch never reaches".to_owned()),
                Ok(()),
                Err("10.2.0.1 is a private address, which a fetch never reaches".to_owned()),
                Ok(()),
            ]
        );
        assert_eq!(
            (
                AllowList::parse("localhost"),
                AllowList::parse("10.0.0.0/33")
            ),
            (
                Err("\"localhost\" is no address or range".to_owned()),
                Err("\"10.0.0.0/33\" has no prefix length of 0 to 32".to_owned())
            )
        );
        assert!(AllowList::parse("0.0.0.0/0")
            .unwrap()
            .contains("8.8.8.8".parse().unwrap()));
    }
}
