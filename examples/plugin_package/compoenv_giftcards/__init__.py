"""compoenv-giftcards: an example service package, registered through an entry point."""

from compoenv_giftcards.service import Gift, GiftCards

__all__ = ["Gift", "GiftCards"]
