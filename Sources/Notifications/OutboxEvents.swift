import AttestPlugins
import AttestPostgres
import Tenancy

/// How events enter the outbox: Notifications owns `notification_outbox`, and whoever causes
/// an event splices these fragments into its own statement, so the event is written in the
/// same transaction as its cause and one statement still writes a whole batch.
public enum OutboxEvents {
    /// The one definition of an event's JSON payload (`AttestNotification`'s shape) in SQL,
    /// from SQL expressions for each field an event has (those it lacks are left out, as the
    /// JSON leaves them out). The event id is added by `insert`.
    public static func payload(
        event: SQL, campus: SQL, occurredAt: SQL, userId: SQL? = nil, attestationId: SQL? = nil, date: SQL? = nil,
        color: SQL? = nil, onTime: SQL? = nil, links: SQL = "'{}'::jsonb"
    ) -> SQL {
        var fields: SQL = """
            'event', \(event), 'campus', \(campus),
            'occurredAt', to_char((\(occurredAt)) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), 'links', \(links)
            """
        if let userId { fields = fields + ", 'userId', (\(userId))::text" }
        if let attestationId { fields = fields + ", 'attestationId', (\(attestationId))::text" }
        if let date { fields = fields + ", 'date', (\(date))::text" }
        if let color { fields = fields + ", 'color', \(color)" }
        if let onTime { fields = fields + ", 'onTime', \(onTime)" }
        return "jsonb_build_object(\(fields))"
    }

    /// An `INSERT` of the events of the CTE `events` (columns `id uuid`, `event text`,
    /// `payload jsonb`) for every sink of `campus` that subscribes to each: one row per event
    /// and sink, the same event id for all of them. Which sinks take an event is Tenancy's to
    /// say (`CampusPluginStore.sinks`). With `traced`, the CTE also has `trace_parent text`
    /// (`OutboxTrace`), kept with each row for its delivery's span.
    /// With `reminders`, the CTE's events are `reminder.due` and it also has `reminder_for
    /// uuid`, the member each is for (what finds whether a member was reminded a day).
    public static func insert(
        campus: CampusID, fromCTE events: StaticString = "events", traced: Bool = false, reminders: Bool = false
    ) -> SQL {
        """
        INSERT INTO notification_outbox (campus_id, id, event, sink_id, payload, trace_parent, reminder_for)
        SELECT \(campus), e.id, e.event, p.plugin_id, e.payload || jsonb_build_object('id', e.id::text),
               \(unsafeRaw: traced ? "NULLIF(e.trace_parent, '')" : "NULL"), \(unsafeRaw: reminders ? "e.reminder_for" : "NULL::uuid")
        FROM \(unsafeRaw: "\(events)") e
        JOIN \(CampusPluginStore.sinks(campus: campus, as: "p", taking: "e.event"))
        """
    }

    /// A condition true when a sink of `campus` takes `event`: events nobody takes need not be
    /// made (reminders read every member to make theirs).
    public static func anySink(campus: CampusID, taking event: NotificationEvent) -> SQL {
        CampusPluginStore.anySink(campus: campus, taking: "\(event.rawValue)::text")
    }

    /// A condition true when `campus` has a sink enabled: events are made only then.
    public static func anySink(campus: CampusID) -> SQL {
        CampusPluginStore.anySink(campus: campus)
    }
}
