import AttestPostgres
import CBadgeImage
import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// The QR code in a photo or a camera frame, for the door scanner where the browser cannot
/// decode one itself (Safari on iPhone, Firefox, Chrome on Linux and Windows): the image is
/// decoded to grey and read with zxing-cpp through C (`CBadgeImage`), on threads of its own, never
/// the event loop's or Swift's cooperative pool, which a slow decode would stall.
///
/// Bounded on every side: an image is refused from its header past `maxPixels` or `maxSide`
/// (a small file can claim a billion pixels), is scaled down to `scanSide` before scanning,
/// at most `maxQueued` images wait or decode at once (more are `busy`), and an answer that
/// takes longer than `deadline` is `timedOut` (the decode still ends, bounded by the pixels).
package enum BadgeImage {
    package enum Outcome: Sendable, Equatable {
        /// The first QR code's text.
        case found(String)
        case noCode
        case notAnImage
        case unreadable
        case tooManyPixels(width: Int, height: Int)
        /// A QR code holding more than `maxText` bytes: no badge is that long.
        case tooLong
        case busy
        case timedOut
    }

    /// A JPEG is decoded at 1/2 to 1/8 scale, so its pixels cost little; PNG and WebP are
    /// decoded whole (a byte a pixel, WebP one and a half), two at a time.
    package static let maxPixels = 40_000_000
    package static let maxWholePixels = 16_000_000
    package static let maxSide = 16_384
    /// A camera frame is about 640 px; a phone's photo is scaled to this before scanning.
    package static let scanSide = 1_600
    package static let maxText = 4_096
    package static let maxQueued = 16
    package static let deadline = Duration.seconds(3)

    private static let pool: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: 2)
        pool.start()
        return pool
    }()
    private static let queued = Atomic<Int>(0)

    /// Reads `bytes` on the scanning threads, answering within `deadline`.
    package static func scan(_ bytes: ByteBuffer, deadline: Duration = deadline) async -> Outcome {
        guard queued.add(1, ordering: .relaxed).newValue <= maxQueued else {
            queued.subtract(1, ordering: .relaxed)
            return .busy
        }
        let answer = OneAnswer()
        return await withCheckedContinuation { continuation in
            answer.set(continuation)
            let timer = MultiThreadedEventLoopGroup.singleton.any().scheduleTask(in: .nanoseconds(deadline.clampedNanoseconds)) {
                answer.give(.timedOut)
            }
            pool.submit { state in
                // Out of the queue before the answer: the caller's next image may come at once.
                let outcome: Outcome = if case .active = state { bytes.withUnsafeReadableBytes { decode($0) } } else { .busy }
                queued.subtract(1, ordering: .relaxed)
                timer.cancel()
                answer.give(outcome)
            }
        }
    }

    /// The scan itself, on the calling thread (for the fuzzer and the pool).
    package static func decode(_ bytes: UnsafeRawBufferPointer) -> Outcome {
        guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), !bytes.isEmpty else { return .notAnImage }
        var text = [CChar](repeating: 0, count: maxText)
        var length = 0, width: Int32 = 0, height: Int32 = 0
        let outcome = attest_scan_qr(
            base, bytes.count, maxPixels, maxWholePixels, Int32(maxSide), Int32(scanSide), &text, maxText, &length, &width, &height)
        switch outcome {
        case ATTEST_SCAN_FOUND.rawValue:
            let found = text.prefix(min(length, maxText)).map { UInt8(bitPattern: $0) }
            return .found(String(decoding: found, as: UTF8.self))
        case ATTEST_SCAN_NO_CODE.rawValue: return .noCode
        case ATTEST_SCAN_NOT_AN_IMAGE.rawValue: return .notAnImage
        case ATTEST_SCAN_TOO_MANY_PIXELS.rawValue: return .tooManyPixels(width: Int(width), height: Int(height))
        case ATTEST_SCAN_TOO_LONG.rawValue: return .tooLong
        case ATTEST_SCAN_NO_MEMORY.rawValue: return .busy
        default: return .unreadable
        }
    }

    /// The first of the decode's and the deadline's answers; the other is dropped.
    private final class OneAnswer: Sendable {
        private let state = Mutex<(continuation: CheckedContinuation<Outcome, Never>?, early: Outcome?, done: Bool)>((nil, nil, false))

        func set(_ continuation: CheckedContinuation<Outcome, Never>) {
            let early = state.withLock { state -> Outcome? in
                if let early = state.early { return early }
                state.continuation = continuation
                return nil
            }
            if let early { continuation.resume(returning: early) }
        }

        func give(_ outcome: Outcome) {
            let continuation = state.withLock { state -> CheckedContinuation<Outcome, Never>? in
                guard !state.done else { return nil }
                state.done = true
                guard let continuation = state.continuation else {
                    state.early = outcome
                    return nil
                }
                state.continuation = nil
                return continuation
            }
            continuation?.resume(returning: outcome)
        }
    }
}
