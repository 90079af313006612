"""`pytriton.proxy`: what an undecorated inference function receives."""
