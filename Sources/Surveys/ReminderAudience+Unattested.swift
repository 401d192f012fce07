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

extension RecipientDirectory {
    /// Active members' addresses and names, and whether each has attested that day: what a
    /// reminder's channel needs to send it (or to learn that it need not).
    public static let members = RecipientDirectory { campus, users, date in
        """
        SELECT u.id AS user_id, u.email, u.display_name,
               EXISTS (SELECT 1 FROM attestations a WHERE a.campus_id = \(campus) AND a.user_id = u.id AND a.local_date = \(date)) AS attested
        FROM users u WHERE u.campus_id = \(campus) AND u.id = ANY(\(users.map(\.rawValue))) AND u.active
        """
    } guestName: { campus, visit in
        GuestStore.name(campus: campus, visit: visit)
    }
}
