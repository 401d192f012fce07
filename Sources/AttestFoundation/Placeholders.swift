extension String {
    /// The text with each `{name}` of `values` replaced, in one pass over its UTF-8: a value
    /// is never read for a placeholder (a person's name holding "{campus}" stays as written),
    /// and a brace that opens no known name stays as it is.
    public func filled(_ values: [String: String]) -> String {
        var result = "", rest = Substring(self)
        while let open = rest.utf8.firstIndex(of: UInt8(ascii: "{")) {
            result += rest[..<open]
            let afterOpen = rest.utf8.index(after: open)
            if let close = rest.utf8[afterOpen...].firstIndex(of: UInt8(ascii: "}")),
                let value = values[String(rest[afterOpen..<close])]
            {
                result += value
                rest = rest[rest.utf8.index(after: close)...]
            } else {
                result += "{"
                rest = rest[afterOpen...]
            }
        }
        return result + rest
    }
}
