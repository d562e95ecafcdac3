module github.com/rmqgo/rmq/broker

go 1.26

require (
	github.com/rmqgo/rmq/pkg v0.0.0
	github.com/rmqgo/rmq/remoting v0.0.0
)

replace (
	github.com/rmqgo/rmq/pkg => ../pkg
	github.com/rmqgo/rmq/remoting => ../remoting
)
