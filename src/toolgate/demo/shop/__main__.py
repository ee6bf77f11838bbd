"""``python -m toolgate.demo.shop --db PATH``: the shop backend over stdio."""

from toolgate.demo.shop import main

if __name__ == "__main__":
    main()
