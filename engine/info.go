package engine

// VocabSize is the number of token ids the model embeds: the bound of every
// token id it trains on or samples.
func (b *Base) VocabSize() int { return b.w.Cfg.VocabSize }
