import Synchronization

/// A place for one value kept beside an object a cache holds (a coloured badge beside its
/// member's verified session), so that it lives exactly as long: when the cache lets the
/// holder go, the kept value goes with it, and nothing else decides when it is stale.
/// Holders inherit it (a verified session is one), so the place costs no object of its own.
open class KeptValue: @unchecked Sendable {  // its one stored property is a Mutex
    /// A reference: one word, where any value would take five.
    private let value = Mutex<(any AnyObject & Sendable)?>(nil)

    public init() {}

    /// The value kept here, if there is one of type `T`.
    public final func kept<T: AnyObject & Sendable>(_ type: T.Type) -> T? { value.withLock { $0 as? T } }

    public final func keep(_ newValue: (any AnyObject & Sendable)?) { value.withLock { $0 = newValue } }

    /// Whether something is kept here.
    public final var keepsSomething: Bool { value.withLock { $0 != nil } }
}
