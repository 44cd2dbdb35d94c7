package shop

import "fmt"

// Checkout prints the total of a cart.
func Checkout(c *Cart) string {
	return fmt.Sprintf("total: %d.%02d", c.Total()/100, c.Total()%100)
}
