import AttestFoundation
import Testing

@Suite("Placeholders")
struct PlaceholderTests {
    @Test func eachNameIsFilledOnceAndNoValueIsReadForOne() {
        let values = ["campus": "North {name}", "name": "Ana {campus}"]
        #expect("Hello {name}, from {campus}.".filled(values) == "Hello Ana {campus}, from North {name}.")
        #expect("{campus}{campus}".filled(values) == "North {name}North {name}")
        // Braces that open no known name stay as written, and a known one after them is filled.
        #expect("{x} {{name}} {name".filled(values) == "{x} {Ana {campus}} {name")
        #expect("á{nombre}é {name}ü".filled(values) == "á{nombre}é Ana {campus}ü")
        // A brace with a combining mark is one Character, not the name's opening.
        #expect("{\u{301}name}".filled(values) == "{\u{301}name}")
        #expect("".filled(values) == "" && "no braces".filled([:]) == "no braces")
    }
}
