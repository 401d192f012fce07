import Foundation
import Logging
import Testing

@testable import AttestCLI

/// Text logs are read by people and grepped by scripts: whatever a value holds (a header, a
/// name from an identity provider), it cannot start a line of its own or forge a field.
@Suite("Log lines")
struct LogFormatTests {
    @Test func textLinesEscapeLineBreaksAndControlCharacters() {
        let line = LineLogHandler.textLine(
            timestamp: "2026-11-23T20:00:00.000Z", level: .info, label: "attest",
            message: "sign-in refused\n2026-11-23T20:00:01.000Z info attest: role granted",
            metadata: [
                "reason": "bad\r\ntoken\u{1B}[31m", "path": "/a b=c", "empty": "", "quote": #"say "hi""#, "sep": "x\u{2028}y\u{85}z",
                "slash": #"a\nb"#,
            ])
        #expect(!line.contains("\n") && !line.contains("\r") && !line.contains("\u{1B}") && !line.contains("\u{2028}"))
        #expect(
            line.hasPrefix(#"2026-11-23T20:00:00.000Z info attest: sign-in refused\n2026-11-23T20:00:01.000Z info attest: role granted "#))
        #expect(line.contains(#"reason=bad\r\ntoken\u{1B}[31m"#))
        #expect(line.contains(#"path="/a b=c""#))
        #expect(line.contains(#"empty="""#))
        #expect(line.contains(#"quote="say \"hi\"""#))
        #expect(line.contains(#"sep=x\u{2028}y\u{85}z"#))
        #expect(line.contains(#"slash=a\\nb"#))  // a backslash sent as text cannot pass for an escape
        #expect(LineLogHandler.escaped("plain text, é ✓") == "plain text, é ✓")
    }
}
