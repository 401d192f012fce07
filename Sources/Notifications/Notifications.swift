// Notifications: the transactional outbox and its delivery worker. Not built yet: see issue 5.
