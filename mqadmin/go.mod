module github.com/rmqgo/rmq/mqadmin

go 1.26

require (
	github.com/rmqgo/rmq/pkg v0.0.0
	github.com/rmqgo/rmq/remoting v0.0.0
	github.com/spf13/cobra v1.10.2
	github.com/spf13/pflag v1.0.10
)

require (
	github.com/bytedance/gopkg v0.1.1 // indirect
	github.com/cloudwego/gopkg v0.1.4 // indirect
	github.com/cloudwego/netpoll v0.7.2 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
)

replace (
	github.com/rmqgo/rmq/pkg => ../pkg
	github.com/rmqgo/rmq/remoting => ../remoting
)
