package protocol

// TopicConfigOf reads the topic settings of a CreateTopicRequestHeader
// (UPDATE_AND_CREATE_TOPIC and the static topic creation): queue counts,
// perm, filter type and sysFlag, over NewTopicConfig(name)'s defaults.
// Errors collect in f, as for every read of it.
func TopicConfigOf(f *Fields, name string) TopicConfig {
	tc := NewTopicConfig(name)
	tc.ReadQueueNums = int(f.Int32("readQueueNums"))
	tc.WriteQueueNums = int(f.Int32("writeQueueNums"))
	tc.Perm = int(f.Int32("perm"))
	tc.TopicFilterType = f.OptStr("topicFilterType", SingleTag)
	tc.TopicSysFlag = int(f.OptInt32("topicSysFlag", 0))
	return tc
}
