from decimal import Decimal

def execute(args: dict[str, int]) -> list[Decimal]:
    x: int = 3
    return [Decimal(x)]
