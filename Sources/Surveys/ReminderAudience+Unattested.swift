import AttestPlugins
import AttestPostgres
import Identity
import Notifications

extension ReminderAudience {
    /// The campus's active members who have not attested that day: whom the day's reminders
    /// go to.
    public static let unattested = ReminderAudience { campus, date in
        """
        SELECT m.user_id FROM (\(UserStore.activeMembers(campus: campus))) m
        WHERE NOT EXISTS (
            SELECT 1 FROM attestations a WHERE a.campus_id = \(campus) AND a.user_id = m.user_id AND a.local_date = \(date))
        """
    }
}
