// Package replica is the broker's side of controller mode (Apache's
// ReplicasManager, org/apache/rocketmq/broker/controller/ReplicasManager.java):
// it finds the controller leader, obtains a permanent controller id for this
// replica, registers, heartbeats every controller, learns role changes
// (NOTIFY_BROKER_ROLE_CHANGED pushes and a GET_REPLICA_INFO poll) and hands
// them to the broker, which switches between master and slave. A master
// holds a lease renewed by the leader's heartbeat answers and fences itself
// when it lapses (docs/replication.md).
//
// Role information is acted on only when its master epoch is newer than the
// one last acted on, so a stale answer (from a just-deposed leader, a late
// notification) never moves a role backwards.
package replica
