package shop

// LinePrice is an item's price times its quantity, in cents.
func LinePrice(it Item) int {
	return it.Price * it.Quantity
}
