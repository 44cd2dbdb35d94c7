package shop

// Item is one line of a cart.
type Item struct {
	SKU      string
	Price    int // cents
	Quantity int
}

// Cart holds the items a customer is about to buy.
type Cart struct {
	Items    []Item
	Discount int // percent
}

// Total is the cart's total in cents after its discount.
func (c *Cart) Total() int {
	sum := 0
	for _, it := range c.Items {
		sum += LinePrice(it)
	}
	return ApplyDiscount(sum, c.Discount)
}
