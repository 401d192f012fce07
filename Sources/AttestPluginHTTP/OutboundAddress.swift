#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An IP address an outbound request would reach, and whether it is one the public internet
/// cannot: loopback, private (RFC 1918, unique local), link-local (cloud metadata lives at
/// 169.254.169.254), carrier-grade NAT, unspecified, multicast, reserved, or an IPv6 form
/// that embeds one of those (IPv4-mapped, NAT64).
struct OutboundAddress: Sendable, Equatable, CustomStringConvertible {
    /// 4 or 16 bytes, network order.
    let bytes: [UInt8]

    init?(bytes: [UInt8]) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// Parses a literal IPv4 or IPv6 address (brackets allowed); nil for a host name.
    init?(literal text: String) {
        var host = text
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 {
            self.init(bytes: withUnsafeBytes(of: &v4) { Array($0) })
            return
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 {
            self.init(bytes: withUnsafeBytes(of: &v6) { Array($0) })
            return
        }
        return nil
    }

    var isPublic: Bool {
        if bytes.count == 4 { return Self.isPublicV4(bytes) }
        let b = bytes
        if b[0..<10].allSatisfy({ $0 == 0 }) && b[10] == 0xFF && b[11] == 0xFF { return Self.isPublicV4(Array(b[12..<16])) }  // ::ffff:a.b.c.d
        if b[0..<12].allSatisfy({ $0 == 0 }) { return false }  // ::, ::1 and the deprecated IPv4-compatible form
        if b[0] == 0x00, b[1] == 0x64, b[2] == 0xFF, b[3] == 0x9B { return Self.isPublicV4(Array(b[12..<16])) }  // 64:ff9b::/96
        if b[0] & 0xFE == 0xFC { return false }  // fc00::/7 unique local
        if b[0] == 0xFE, b[1] & 0xC0 == 0x80 { return false }  // fe80::/10 link-local
        if b[0] == 0xFE, b[1] & 0xC0 == 0xC0 { return false }  // fec0::/10 site-local (deprecated)
        if b[0] == 0xFF { return false }  // multicast
        if b[0] == 0x20, b[1] == 0x01, b[2] == 0x0D, b[3] == 0xB8 { return false }  // 2001:db8::/32 documentation
        return true
    }

    static func isPublicV4(_ b: [UInt8]) -> Bool {
        switch (b[0], b[1]) {
        case (0, _), (10, _), (127, _): return false
        case (100, 64...127): return false  // carrier-grade NAT
        case (169, 254): return false  // link-local, cloud metadata
        case (172, 16...31): return false
        case (192, 168): return false
        case (192, 0) where b[2] == 0 || b[2] == 2: return false  // IETF protocol assignments, TEST-NET-1
        case (198, 18...19): return false  // benchmarking
        case (198, 51) where b[2] == 100, (203, 0) where b[2] == 113: return false  // TEST-NET-2, -3
        case (224...255, _): return false  // multicast, reserved, broadcast
        default: return true
        }
    }

    var description: String {
        var text = [CChar](repeating: 0, count: 64)
        var copy = bytes
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        guard inet_ntop(family, &copy, &text, socklen_t(text.count)) != nil else { return "?" }
        return String(cString: text)
    }

    /// Every address `host` resolves to (blocking: call it off the cooperative pool).
    static func resolve(_ host: String) -> [OutboundAddress] {
        if let literal = OutboundAddress(literal: host) { return [literal] }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
            hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0, let first = list else { return [] }
        defer { freeaddrinfo(list) }
        var found: [OutboundAddress] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let entry = cursor {
            if let address = entry.pointee.ai_addr {
                switch Int32(address.pointee.sa_family) {
                case AF_INET:
                    address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                        var raw = v4.pointee.sin_addr
                        if let parsed = OutboundAddress(bytes: withUnsafeBytes(of: &raw) { Array($0) }) { found.append(parsed) }
                    }
                case AF_INET6:
                    address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                        var raw = v6.pointee.sin6_addr
                        if let parsed = OutboundAddress(bytes: withUnsafeBytes(of: &raw) { Array($0) }) { found.append(parsed) }
                    }
                default: break
                }
            }
            cursor = entry.pointee.ai_next
        }
        return found
    }
}
