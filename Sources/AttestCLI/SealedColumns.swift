import Identity
import Journal
import Notifications
import Records
import Surveys
import Tenancy

/// Every column of the schema that holds values sealed under the key-encryption key, from
/// the modules that seal them: what `attest keys rotate-kek` re-wraps. A test compares this
/// list with the schema's `bytea` columns, so a new sealed column cannot be forgotten here.
enum SealedColumns {
    static let all: [SealedColumn] =
        BadgeKeyStore.sealedColumns + OIDCIssuerStore.sealedColumns + CampusPluginStore.sealedColumns + JournalStore.sealedColumns
        + EpisodeStore.sealedColumns + ProfileStore.sealedColumns + PushKeyStore.sealedColumns + PushSubscriptionStore.sealedColumns
        + HealthRecords.sealedColumns
}
