import NIOCore
import NIOHTTPTypes

/// The request body's deadline, kept on the connection's event loop: a request whose body has
/// not ended `timeout` after its head fails its body with `BodyDeadlineExceeded`, which the
/// route reading it answers with a 408 (`collectBody`); a body nobody reads ends the
/// connection. The idle timeout does not apply while a request is read, so without it a client
/// trickling a body a byte at a time held its connection as long as it liked.
///
/// A body that arrives with its head (nearly every request) sets no timer at all; one that
/// comes later sets one timer on the connection's own loop, no task or thread hop. The
/// deadline had been a second task racing the body's read with a NIO timer set from Swift's
/// pool, for every request with a body: 12% of the server's CPU per submission in
/// alternating runs of `Benchmarks/submit`'s load.
///
/// One per connection, after the HTTP codec and `LingeringCloseHandler`; it passes every part
/// on unchanged.
package final class BodyDeadlineHandler: ChannelInboundHandler, RemovableChannelHandler {
    package typealias InboundIn = HTTPRequestPart
    package typealias InboundOut = HTTPRequestPart

    private let timeout: TimeAmount
    /// A head has come and its end not yet.
    private var open = false
    private var deadline: Scheduled<Void>?

    package init(timeout: TimeAmount) { self.timeout = timeout }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head: open = true
        case .end:
            open = false
            deadline?.cancel()
            deadline = nil
        case .body: break
        }
        context.fireChannelRead(data)
    }

    package func channelReadComplete(context: ChannelHandlerContext) {
        // What has arrived is read: a request still open now waits for the network.
        if open, deadline == nil {
            let loop = context.eventLoop.assumeIsolated()
            deadline = loop.scheduleTask(in: timeout) { [self] in
                deadline = nil
                guard open else { return }
                open = false  // once: the request's body has failed
                context.fireErrorCaught(BodyDeadlineExceeded())
            }
        }
        context.fireChannelReadComplete()
    }

    package func channelInactive(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
        context.fireChannelInactive()
    }

    package func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }
}

/// A request body that did not arrive within `AttestRequestContext.bodyTimeout` of its head.
package struct BodyDeadlineExceeded: Error {}
