// Package statictopic is the broker side of static topics (logic queues,
// docs/static-topics.md): the mapping table persisted in
// <storePathRootDir>/config/topicQueueMapping.json (Manager), the
// UPDATE_AND_CREATE_STATIC_TOPIC request, the rewriting of send, pull and
// offset requests from logic to physical queues (Service), reads of older
// segments held by other brokers (Remote, BrokerRPC) and the background
// removal of expired segments and stale backup lists (CleanService).
//
// A logic queue is an ordered list of mapping items (segments); the last
// item is the leader, the only writable one, and the broker that stores it
// translates every request about the logic queue. Requests carrying
// lo=false are physical (broker-to-broker) and pass through untouched, as
// do requests for topics without a mapping.
package statictopic
