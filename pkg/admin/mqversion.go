package admin

import "github.com/rmqgo/rmq/remoting"

// VersionDesc is Java's MQVersion.getVersionDesc ("V5_5_0" for 513).
func VersionDesc(v int) string { return remoting.VersionDesc(int32(v)) }
