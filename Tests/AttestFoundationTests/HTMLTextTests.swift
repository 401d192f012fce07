import AttestFoundation
import Testing

@Suite("HTML text")
struct HTMLTextTests {
    @Test func markupIsEscapedAndControlsHTMLForbidsBecomeTheReplacementCharacter() {
        #expect(HTMLText.escape(#"<a href="x">Tom & 'Jerry'</a>"#) == "&lt;a href=&quot;x&quot;&gt;Tom &amp; &#39;Jerry&#39;&lt;/a&gt;")
        // A NUL typed into a query the page shows back; an escape character; DEL.
        #expect(HTMLText.escape("2026\u{0}-12\u{1B}[2J\u{7F}") == "2026\u{FFFD}-12\u{FFFD}[2J\u{FFFD}")
        // What a document may hold stays: tab, line feed, form feed, carriage return, and text.
        let kept = "a\tb\nc\u{0C}d\r\ne — ñ 😷"
        #expect(HTMLText.escape(kept) == kept)
    }
}
