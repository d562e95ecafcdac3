module github.com/rmqgo/rmq/remoting

go 1.26

require github.com/cloudwego/netpoll v0.7.2

require (
	github.com/bytedance/gopkg v0.1.1 // indirect
	github.com/cloudwego/gopkg v0.1.4 // indirect
)
