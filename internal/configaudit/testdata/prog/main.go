package main

import "example/config"

func main() {
	c := &config.Config{}
	c.Forgot = 1 // a write is no read
	println(c.Used, c.Dir(), c.Validate(), c.Misnamed)
	show(c)
}

func show(c *config.Config) { println(c.Shown) }
