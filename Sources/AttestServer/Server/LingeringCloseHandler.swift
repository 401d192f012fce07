import NIOCore

/// Once the server has said its last on a connection (the response written and its side
/// closed), reads and discards whatever the client still sends until the client closes too,
/// for at most `linger`, then closes: a lingering close, as web servers do.
///
/// Without it, a connection whose client went on sending after the answer (a head larger than
/// the limit, a body the server refused) stopped being read once nothing consumed its input,
/// so it never saw the client close and kept its buffers until the idle timeout (a client
/// sending large heads grew the server with every request: docs/reliability.md). One per
/// connection, after the HTTP codec; it passes the HTTP parts on as they come, never opening
/// them.
package final class LingeringCloseHandler: ChannelDuplexHandler, RemovableChannelHandler {
    package typealias InboundIn = NIOAny
    package typealias InboundOut = NIOAny
    package typealias OutboundIn = NIOAny
    package typealias OutboundOut = NIOAny

    private let linger: TimeAmount
    private var lingering = false
    private var deadline: Scheduled<Void>?

    package init(linger: TimeAmount = .seconds(2)) { self.linger = linger }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // The application has finished with this connection's input.
        guard !lingering else { return }
        context.fireChannelRead(data)
    }

    package func channelReadComplete(context: ChannelHandlerContext) {
        guard lingering else {
            context.fireChannelReadComplete()
            return
        }
        context.read()
    }

    package func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if lingering, let event = event as? ChannelEvent, event == .inputClosed {
            context.close(promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    package func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        context.close(mode: mode, promise: promise)
        guard mode == .output, !lingering else { return }
        lingering = true
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: linger) { context.close(promise: nil) }
        // Reads go on from here, below the application's handler, which no longer asks for any.
        context.read()
    }

    package func channelInactive(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
        context.fireChannelInactive()
    }
}
