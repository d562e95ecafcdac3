package auth

import (
	"reflect"
	"testing"
)

func TestRemotingChecks(t *testing.T) {
	pub, sub := []Action{ActPub}, []Action{ActSub}
	for _, tc := range []struct {
		name string
		code int32
		ext  map[string]string
		body string
		want []Check
	}{
		{"SEND_MESSAGE_V2", 310, map[string]string{"a": "PG", "b": "T1"}, "", []Check{{TopicResource("T1"), pub}}},
		{"SEND_BATCH_MESSAGE", 320, map[string]string{"a": "PG", "b": "T1"}, "", []Check{{TopicResource("T1"), pub}}},
		{"send to a retry topic is Sub on the group", 310, map[string]string{"a": "CG", "b": "%RETRY%CG"}, "", []Check{{GroupResource("CG"), sub}}},
		{"send to a retry topic without group", 310, map[string]string{"b": "%RETRY%CG"}, "", []Check{{GroupResource("CG"), sub}}},
		{"SEND_MESSAGE", 10, map[string]string{"producerGroup": "PG", "topic": "T1"}, "", []Check{{TopicResource("T1"), pub}}},
		{"PULL_MESSAGE", 11, map[string]string{"consumerGroup": "CG", "topic": "T1"}, "", []Check{{TopicResource("T1"), sub}, {GroupResource("CG"), sub}}},
		{"PULL_MESSAGE of a retry topic", 11, map[string]string{"consumerGroup": "CG", "topic": "%RETRY%CG"}, "", []Check{{GroupResource("CG"), sub}}},
		{"QUERY_CONSUMER_OFFSET", 14, map[string]string{"consumerGroup": "CG", "topic": "T1"}, "", []Check{{TopicResource("T1"), []Action{ActSub, ActGet}}, {GroupResource("CG"), []Action{ActSub, ActGet}}}},
		{"UPDATE_CONSUMER_OFFSET", 15, map[string]string{"consumerGroup": "CG", "topic": "T1"}, "", []Check{{TopicResource("T1"), []Action{ActSub, ActUpdate}}, {GroupResource("CG"), []Action{ActSub, ActUpdate}}}},
		{"HEART_BEAT of a consumer", 34, map[string]string{"x": "y"}, `{"clientID":"c","consumerDataSet":[{"groupName":"CG","subscriptionDataSet":[{"topic":"T1"},{"topic":"%RETRY%CG"}]}],"producerDataSet":[{"groupName":"PG"}]}`,
			[]Check{{GroupResource("CG"), sub}, {TopicResource("T1"), sub}}},
		{"HEART_BEAT of a producer", 34, map[string]string{"x": "y"}, `{"clientID":"c","producerDataSet":[{"groupName":"PG"}]}`, nil},
		{"LOCK_BATCH_MQ", 41, map[string]string{"x": "y"}, `{"consumerGroup":"CG","clientId":"c","mqSet":[{"topic":"T1","brokerName":"b","queueId":0}]}`,
			[]Check{{GroupResource("CG"), sub}, {TopicResource("T1"), sub}}},
		{"UNREGISTER_CLIENT of a producer", 35, map[string]string{"clientID": "c", "producerGroup": "PG"}, "", nil},
		{"CONSUMER_SEND_MSG_BACK", 36, map[string]string{"group": "CG", "originTopic": "T1"}, "", []Check{{GroupResource("CG"), sub}}},
		{"END_TRANSACTION without topic", 37, map[string]string{"producerGroup": "PG"}, "", nil},
		{"GET_ROUTEINFO_BY_TOPIC", 105, map[string]string{"topic": "T1"}, "", []Check{{TopicResource("T1"), []Action{ActPub, ActSub, ActGet}}}},
		{"POP_MESSAGE (annotation)", 200050, map[string]string{"consumerGroup": "CG", "topic": "T1"}, "", []Check{{GroupResource("CG"), sub}, {TopicResource("T1"), sub}}},
		{"POP_MESSAGE of a retry topic", 200050, map[string]string{"consumerGroup": "CG", "topic": "%RETRY%CG"}, "", []Check{{GroupResource("CG"), sub}, {GroupResource("CG"), sub}}},
		{"UPDATE_AND_CREATE_TOPIC", 17, map[string]string{"topic": "T1"}, "", []Check{{TopicResource("T1"), []Action{ActCreate}}}},
		{"DELETE_TOPIC_IN_BROKER", 215, map[string]string{"topic": "T1"}, "", []Check{{TopicResource("T1"), []Action{ActDelete}}}},
		{"GET_CONSUME_STATS with a topic list", 208, map[string]string{"consumerGroup": "CG", "topicList": "A;B;"}, "", []Check{{GroupResource("CG"), []Action{ActGet}}, {TopicResource("A"), []Action{ActGet}}, {TopicResource("B"), []Action{ActGet}}}},
		{"AUTH_CREATE_USER is Cluster Update", 3001, map[string]string{"username": "u"}, "", []Check{{ClusterResource("C1"), []Action{ActUpdate}}}},
		{"AUTH_LIST_ACL is Cluster Get", 3010, map[string]string{"subjectFilter": ""}, "", []Check{{ClusterResource("C1"), []Action{ActGet}}}},
		{"GET_BROKER_MEMBER_GROUP names its cluster", 901, map[string]string{"clusterName": "C9", "brokerName": "b"}, "", []Check{{ClusterResource("C9"), []Action{ActGet}}}},
		{"GET_ALL_TOPIC_CONFIG has no resource", 21, map[string]string{"x": "y"}, "", nil},
		{"a code without rule", 26, map[string]string{"x": "y"}, "", nil},
		{"no fields", 310, nil, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RemotingChecks(tc.code, tc.ext, []byte(tc.body), "C1")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("checks %+v, want %+v", got, tc.want)
			}
		})
	}
	if _, err := RemotingChecks(34, map[string]string{"x": "y"}, nil, "C1"); err == nil || err.Error() != "parse authorization context error." {
		t.Fatalf("heartbeat without body: %v", err)
	}
}
