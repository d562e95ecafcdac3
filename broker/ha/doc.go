// Package ha replicates the CommitLog from a master to its slaves with the
// classic RocketMQ protocol (org/apache/rocketmq/store/ha/DefaultHAService.java):
// one TCP connection per slave, no handshake; the slave reports its max
// offset (8 bytes), the master streams raw CommitLog bytes in frames of a
// 12-byte header and a body that never crosses a CommitLog file.
//
// The master (Master) also counts validated per-slave acks so that a
// SYNC_MASTER send can wait for its replicas; the slave (Slave) appends the
// bytes verbatim and lets the store's dispatcher index them.
package ha
