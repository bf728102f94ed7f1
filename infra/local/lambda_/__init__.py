"""Lambda, locally: function workers, their protocol, and the triggers that invoke them."""
