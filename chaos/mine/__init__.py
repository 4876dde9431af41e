"""Mining: signatures of crash prefixes, the fixture corpus, and other reducers as oracles."""
