module github.com/rmqgo/rmq/examples

go 1.26

require (
	github.com/rmqgo/rmq/pkg v0.0.0
	github.com/rmqgo/rmq/remoting v0.0.0
)

require (
	github.com/bytedance/gopkg v0.1.1 // indirect
	github.com/cloudwego/gopkg v0.1.4 // indirect
	github.com/cloudwego/netpoll v0.7.2 // indirect
)

replace (
	github.com/rmqgo/rmq/pkg => ../pkg
	github.com/rmqgo/rmq/remoting => ../remoting
)
