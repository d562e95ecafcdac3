// Package client is a Go client SDK for RocketMQ brokers that speaks the
// remoting protocol (remoting.md): a Producer (sync, async, one-way, batch
// and queue-selected sends with retries on another broker) and a low-level
// PullConsumer (pull, offsets, and a simple ConsumeLoop over all queues of a
// topic). It talks to any RocketMQ 4.x/5.x nameserver and broker, Apache's
// or ours.
//
// Behaviour follows Apache's Java client where clients differ: routes are
// looked up on the nameserver (falling back to TBW102 for topics that do not
// exist yet) and refreshed every 30 s, heartbeats go to brokers every 30 s,
// sends use SEND_MESSAGE_V2 (310) with short header names, and response codes
// are handled as in remoting.md §2.
//
// Producer and PullConsumer own their connections and background goroutines;
// Shutdown stops all of them. Nothing in this package is global.
package client
